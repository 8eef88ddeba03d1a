"""The bottom floor: frozen record types and the JSON file helpers; imports only stats, errors, _version."""
