raise RuntimeError("directory without __init__ imported")
