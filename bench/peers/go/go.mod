module ptbench-go

go 1.19
