# make        build everything into build/ (the CLI is build/moe)
# make test   install what is missing, build, run the whole CPU test suite
# make demo   install what is missing, build, run the main job on an embedded default
BUILD ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo fuzz asan format clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD)

test: build
	scripts/run-tests $(BUILD)

demo: build
	scripts/demo $(BUILD)

# AddressSanitizer build of the CPU code and tools, for the corrupted-input tests.
asan:
	$(MAKE) build BUILD=build-asan BUILD_TYPE=RelWithDebInfo CMAKE_FLAGS="-DMOE_SANITIZE=ON -DMOE_ENABLE_CUDA=OFF"

format:
	find src tools tests bench -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
