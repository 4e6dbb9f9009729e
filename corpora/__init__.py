"""corpora room (see DESIGN.md)."""
