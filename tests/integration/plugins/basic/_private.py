raise RuntimeError("names starting with '_' are not plugins")
