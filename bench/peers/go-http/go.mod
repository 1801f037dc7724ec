module ptbench-go-http

go 1.19
