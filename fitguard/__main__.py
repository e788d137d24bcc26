import sys

from fitguard.cli import main

sys.exit(main())
