"""`python -m webhook`: the same as `fitguard webhook`."""

from cmdline.runner import module_main
from webhook.cli import register

module_main(register, "webhook")
