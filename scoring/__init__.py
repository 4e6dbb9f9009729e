"""scoring room (see DESIGN.md)."""
