"""Terminal renderers (rich), one module per result: diagnose, compare, scale, sweep, baseline, env."""
