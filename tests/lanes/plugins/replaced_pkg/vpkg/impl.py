"""The part of vpkg a deploy replaces (see __init__.py)."""
VERSION = 1


def version():
    return float(VERSION)
