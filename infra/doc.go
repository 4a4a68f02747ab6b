// Package infra holds the deployable CloudFormation template (template.yaml)
// of the AWS stack. It has no Go code: its test parses the template with
// goformation and checks it against the code — the table against
// store.TableInput, the functions, event source mappings, API, IAM and
// alarms against what the programs need (see README.md).
package infra
