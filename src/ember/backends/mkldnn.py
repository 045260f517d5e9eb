"""``ember.backends.mkldnn``: oneDNN (MKL-DNN) is not part of Ember.

Example:
    >>> ember.backends.mkldnn.is_available()
    False
"""


def is_available() -> bool:
    """Whether oneDNN kernels can be used: False.

    Example:
        >>> ember.backends.mkldnn.is_available()
        False
    """
    return False
