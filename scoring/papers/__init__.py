"""Paper-audit scoring: detection and false-positive rates with paper-level bootstrap, agreement,
coupling, trend and self-preference statistics, the paper-audit report."""
