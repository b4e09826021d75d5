def double_into(src, dst):
    with memoryview(src) as s, memoryview(dst) as d:
        fs, fd = s.cast("B").cast(s.format), d.cast("B").cast(d.format)
        for i in range(len(fd)):
            fd[i] = 2 * fs[i]
        fs.release()
        fd.release()
