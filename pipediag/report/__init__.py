"""Rendering results: `terminal/` (rich renderables) and `html/` (pages and SVG charts), one module per result, and
`samples_csv` for the raw samples.
"""
