variable "size" {
  type = number
}

output "double" {
  value = var.size * 2
}
