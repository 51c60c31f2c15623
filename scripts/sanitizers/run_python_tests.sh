#!/usr/bin/env bash
# Runs Python tests against the bridge of a sanitizer build tree (BUILD_DIR/python/openneuron,
# a package copy whose sources link to python/openneuron), with the sanitizer runtimes
# preloaded into the uninstrumented interpreter.
# Usage: run_python_tests.sh PYTHON BUILD_DIR TEST_FILE...
set -euo pipefail
python=$1 build_dir=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
package=$build_dir/python/openneuron
mkdir -p "$package"
for entry in "$root"/python/openneuron/*; do
  case $(basename "$entry") in _C.*.so | __pycache__) continue ;; esac
  ln -sfn "$entry" "$package/$(basename "$entry")"
done
ls "$package"/_C.*.so >/dev/null  # the sanitized bridge must be there, not the regular one

preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
# Leak checking stays with the C++ suites: CPython and torch keep interned objects, module
# state and their thread pools allocated at exit by design, which LSan would report.
# Extra arguments (e.g. -k) can follow the test files. --capture=sys lets sanitizer reports,
# written to the process's stderr, reach the log.
PYTHONPATH=$build_dir/python LD_PRELOAD=$preload \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  TORCH_DEVICE_BACKEND_AUTOLOAD=1 \
  "$python" -m pytest -q -p no:cacheprovider --capture=sys "$@"
