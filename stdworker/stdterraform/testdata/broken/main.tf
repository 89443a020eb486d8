resource "terraform_data" "x" {
  input = "unclosed"

output "o" {
  value = 1
}
