"""The user's dataset builder: finding it, calling it, and reading the pipeline it returns (its graph and stages)."""
