"""``python -m ember``: the ``ember`` command (:mod:`ember.cli`) where the console script is
not on the path.

Example::

    python -m ember train --model cnn --epochs 1
"""

import sys

from ember.cli import main

sys.exit(main())
