"""Deciding what the numbers mean (input, compute, memory, host, or inconclusive and why), for a diagnosis and for a comparison; pure."""
