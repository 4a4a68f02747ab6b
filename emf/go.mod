module github.com/dynastream/dynastream/emf

go 1.26.0
