"""Paper-audit adjudication: detection matching, false-positive panels, built-in controls."""
