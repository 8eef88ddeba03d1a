"""The bottom floor: frozen record types, the result header and the named kinds; imports only stats, errors, _version."""
