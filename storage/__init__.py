"""storage room (see DESIGN.md)."""
