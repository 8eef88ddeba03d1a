"""Concrete fixes that name the user's own stage, each with its measured effect where measured; pure."""
