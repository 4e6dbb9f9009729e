"""Fault and bad-input hardening: nothing lost, nothing paid twice, nothing leaked, nothing escapes."""
