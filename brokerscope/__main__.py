import sys

from brokerscope.cli import main

sys.exit(main())
