# Thin wrapper over CMake; the README's two commands are `make run` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build run test asan tsan fuzz clean deps deps-test

all: build

# Debian packages (installed when missing, as root or through sudo; else the exact
# command to run is printed). LOOM_NO_DEPS=1 skips the check.
deps:
	@sh tools/deps.sh build

deps-test:
	@sh tools/deps.sh test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# Main job: generate text with the bundled default model.
run: build
	./$(BUILD)/bin/loom run -p "Once upon a time" -n 128

# Full test suite.
test: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DLOOM_SANITIZE=ON"

tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DLOOM_TSAN=ON"

clean:
	rm -rf build build-asan build-tsan build-fuzz
