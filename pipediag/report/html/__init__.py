"""HTML pages, one module per result, with the shared page parts and the SVG charts."""
