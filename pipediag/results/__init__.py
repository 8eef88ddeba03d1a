"""The result objects (diagnose, compare, scale, sweep, baseline), each with its JSON round trip."""
