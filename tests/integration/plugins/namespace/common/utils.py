"""Part of the namespace package common (no __init__.py)."""


def twice(src, dst, factor):
    for i in range(len(dst)):
        dst[i] = src[i] * factor
