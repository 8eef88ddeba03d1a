"""Deciding what the numbers mean: input, compute, memory, host — or inconclusive, and why."""
