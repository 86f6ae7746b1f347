"""What sits beside the pipeline and uses it: the command line (cli), build-time files
(codegen), Dask arrays (dask), IPOPT problems (ipopt)."""
