from fitguard.cli import module_main

module_main("webhook.cli", "webhook")
