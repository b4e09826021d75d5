"""A plugin that ends the process while it is imported (issue 25 item 4)."""

import os

os._exit(5)
