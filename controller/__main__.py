"""`python -m controller`: the same as `fitguard controller`."""

from cmdline.runner import module_main
from controller.cli import register

if __name__ == "__main__":
    module_main(register, "controller")
