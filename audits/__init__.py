"""audits room: one Audit per product line (citations, paper_audit); see DESIGN.md."""
