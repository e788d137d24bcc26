"""`python -m controller`: the same as `fitguard controller`."""

from fitguard.cli import module_main

if __name__ == "__main__":
    module_main("controller.cli", "controller")
