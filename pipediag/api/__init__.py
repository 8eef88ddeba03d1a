"""The entry points: diagnose, compare, scale, sweep, baseline and tuned, one module each."""
