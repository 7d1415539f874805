# A oneDNN package whose configuration fails, as Debian 12's does when
# ocl-icd-opencl-dev is missing (its dnnl-config.cmake calls
# find_package(OpenCL REQUIRED)).
set(DNNL_GPU_RUNTIME "OCL")
find_package(NoSuchPackage REQUIRED)
