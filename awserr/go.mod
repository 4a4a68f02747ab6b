module github.com/dynastream/dynastream/awserr

go 1.26.0

require github.com/aws/smithy-go v1.28.8
