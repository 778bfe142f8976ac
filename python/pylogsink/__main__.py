"""``python -m pylogsink``: the demo (``python -m pylogsink.demo``), with the
same options."""

import sys

from pylogsink.demo import main

sys.exit(main(prog="python -m pylogsink"))
