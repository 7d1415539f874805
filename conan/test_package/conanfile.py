"""Builds a small program against the trnmx package and runs it; links the
static library into a shared one when it is built with fPIC; runs the packaged
`trnmx` program (option tools) and one `trnmx-emu` GEMM on the packaged trn3
machine file with its functional check (option emulator)."""
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class TrnmxTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.user_presets_path = False  # No CMakeUserPresets.json in the checkout.
        trnmx = self.dependencies[self.tested_reference_str]
        tc.cache_variables["TRNMX_TEST_SHARED_PLUGIN"] = bool(
            not trnmx.options.shared and trnmx.options.get_safe("fPIC"))
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if not can_run(self):
            return
        self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
        trnmx = self.dependencies[self.tested_reference_str]
        if trnmx.options.get_safe("tools"):
            tool = os.path.join(trnmx.package_folder, "bin", "trnmx")
            self.run(f'echo 0x3f800000 0x40490fd0 | "{tool}" convert --to e4m3', env="conanrun")
        if trnmx.options.get_safe("emulator"):
            emu = os.path.join(trnmx.package_folder, "bin", "trnmx-emu")
            machine = os.path.join(trnmx.package_folder, "share", "trnmx", "machines", "trn3.json")
            self.run(f'"{emu}" gemm --machine "{machine}" --m 256 --n 256 --k 512 '
                     f'--dtype mxfp4 --check', env="conanrun")
