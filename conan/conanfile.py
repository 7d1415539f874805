"""Conan 2 recipe of trnmx.

The recipe lives in conan/ and packages the checkout it sits in (the parent
directory). Build and test it offline with the Debian 12 profile, which takes
CLI11 (libcli11-dev) and nlohmann_json (nlohmann-json3-dev) from Debian through
[platform_requires] and links Highway and pthreadpool from Debian
(libhwy-dev, libpthreadpool-dev) as system libraries:

    conan create conan -pr:a conan/profiles/debian12 --build=missing -nr

Package contents: the trnmx library (static by default; -o "trnmx/*:shared=True"
for a shared one) and its public headers (component trnmx::trnmx); the
`trnmx` command-line program (option `tools`, default True); the Trainium
emulator (option `emulator`, default True): library trnmx::emu (component
`emu`), its headers, the `trnmx-emu` program and the machine descriptions
under share/trnmx/machines. License: Apache-2.0 (licenses/LICENSE).
"""
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir

required_conan_version = ">=2.0"


class TrnmxConan(ConanFile):
    name = "trnmx"
    description = ("Bit-exact microscaling (MX) numerics, tiled kernels and a "
                   "Trainium3 emulator")
    topics = ("mx", "microscaling", "fp8", "fp4", "numerics", "trainium")
    license = "Apache-2.0"
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"shared": [True, False], "fPIC": [True, False], "tools": [True, False],
               "emulator": [True, False]}
    default_options = {"shared": False, "fPIC": True, "tools": True, "emulator": True}

    # What the package is built from: the top-level CMake project and the
    # directories it reads when tests and benchmarks are off.
    _source_items = ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*", "tools/*",
                     "emulator/*")

    def set_version(self):
        # One version for the project: project(trnmx VERSION x.y.z) in the
        # top-level CMakeLists.txt.
        text = load(self, os.path.join(self.recipe_folder, "..", "CMakeLists.txt"))
        match = re.search(r"project\(\s*trnmx\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
        if not match:
            raise RuntimeError("no 'project(trnmx VERSION x.y.z)' in CMakeLists.txt")
        self.version = self.version or match.group(1)

    def export_sources(self):
        root = os.path.join(self.recipe_folder, "..")
        for pattern in self._source_items:
            copy(self, pattern, root, self.export_sources_folder,
                 excludes=("*/__pycache__/*", "*.pyc"))

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        if self.options.tools or self.options.emulator:
            # Header-only, used by the `trnmx` and `trnmx-emu` programs only:
            # not visible to consumers of the library. On Debian it is
            # libcli11-dev 2.1.2, declared in the profile's [platform_requires].
            self.requires("cli11/[>=2.1 <3]", visible=False)
        if self.options.emulator:
            # Header-only, read by the emulator's .cc files only (machine
            # JSON): not in its public headers nor on a consumer's link line.
            # Debian: nlohmann-json3-dev 3.11.2 ([platform_requires]).
            self.requires("nlohmann_json/[>=3.10 <4]", visible=False)

    def validate(self):
        check_min_cppstd(self, 20)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["TRNMX_BUILD_TESTS"] = False
        tc.cache_variables["TRNMX_BUILD_BENCHMARKS"] = False
        tc.cache_variables["TRNMX_BUILD_EMULATOR"] = bool(self.options.emulator)
        tc.cache_variables["TRNMX_BUILD_TOOLS"] = bool(self.options.tools)
        tc.cache_variables["TRNMX_INSTALL"] = True
        # The toolchain also sets CMAKE_POSITION_INDEPENDENT_CODE from the
        # fPIC option; trnmx's targets leave it to that variable.
        tc.generate()
        # For a real cli11 package; a platform requirement generates nothing
        # and find_package(CLI11 CONFIG) finds Debian's
        # /usr/share/cmake/CLI11/CLI11Config.cmake.
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.install()
        # Consumers get Conan's generated CMake config and .pc files (from
        # package_info below), not the project's own.
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "lib", "pkgconfig"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "trnmx")
        self.cpp_info.set_property("pkg_config_name", "trnmx-all")
        core = self.cpp_info.components["trnmx"]
        core.set_property("cmake_target_name", "trnmx::trnmx")
        core.set_property("pkg_config_name", "trnmx")
        core.libs = ["trnmx"]
        # Highway (SIMD dispatch) and pthreadpool (ThreadPoolExecutor) are
        # private link dependencies taken from the system (Debian's
        # libhwy-dev and libpthreadpool-dev, see the profile): consumers only
        # need them on the link line, never in their include path.
        core.system_libs = ["hwy", "pthreadpool"]
        if self.options.emulator:
            emu = self.cpp_info.components["emu"]
            emu.set_property("cmake_target_name", "trnmx::emu")
            emu.set_property("pkg_config_name", "trnmx-emu")
            emu.libs = ["trnmx_emu"]
            emu.requires = ["trnmx"]
            # The machine descriptions (trn2.json, trn3.json), the same as
            # the presets compiled into the library.
            emu.resdirs = [os.path.join("share", "trnmx", "machines")]
        # cli11 and nlohmann_json are visible=False requirements of the
        # programs and the emulator's .cc files: no component passes them on.
