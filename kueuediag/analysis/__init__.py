"""Pure analyses shared by several checks (message parsing, quota trees, node capacity, queue order)."""
