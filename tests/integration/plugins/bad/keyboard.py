raise KeyboardInterrupt("plugin interrupted")
