"""Rendering a Diagnosis: rich renderables for the terminal, JSON for machines."""
