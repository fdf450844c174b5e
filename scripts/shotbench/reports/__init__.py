"""Rendering: executed notebooks to standalone HTML, screenshots, the reports index."""
