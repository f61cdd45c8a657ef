# Added by Horizon's suites/build_task.py (not part of the package): the package is not
# installed, so its source folder is put first on the import path for the tests.
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent / "src"))
