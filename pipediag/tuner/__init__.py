"""The tuned pipeline: rewriting the user's graph, its rules, ablation, output checks, selection."""
