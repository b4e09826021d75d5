raise RuntimeError("names starting with '.' are not plugins")
