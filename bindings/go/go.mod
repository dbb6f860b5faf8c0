module posemb

go 1.19
