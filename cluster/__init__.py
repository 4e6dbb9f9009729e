"""cluster room (see DESIGN.md)."""
