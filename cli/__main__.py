import sys

from pagetrail.cli.main import main

sys.exit(main())
