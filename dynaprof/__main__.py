import sys

from dynaprof.cli import main

sys.exit(main())
