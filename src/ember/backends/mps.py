"""``ember.backends.mps``: Apple's Metal (MPS) backend is not part of Ember.

Example:
    >>> ember.backends.mps.is_available(), ember.backends.mps.is_built()
    (False, False)
"""


def is_available() -> bool:
    """Whether the MPS device can be used: False.

    Example:
        >>> ember.backends.mps.is_available()
        False
    """
    return False


def is_built() -> bool:
    """Whether this build has MPS support: False.

    Example:
        >>> ember.backends.mps.is_built()
        False
    """
    return False
